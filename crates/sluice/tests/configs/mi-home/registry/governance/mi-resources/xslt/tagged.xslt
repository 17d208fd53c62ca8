<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
    <xsl:template match="/order">
        <tagged from="mi-resources"><xsl:value-of select="symbol"/></tagged>
    </xsl:template>
</xsl:stylesheet>
